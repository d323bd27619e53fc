"""Adapters that expose the seed envs to other frameworks' protocols."""
