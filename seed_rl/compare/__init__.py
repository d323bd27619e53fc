"""Arms against each other: configs per arm, runs over seeds, tables, paired differences, plots."""
