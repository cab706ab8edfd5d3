"""MNote's own light index of the roots' text files (Workspace search), fed by a signal from sync."""
