"""What a run leaves on disk, and the tools that read it: metrics and episode logs, export, viewer, audit."""
