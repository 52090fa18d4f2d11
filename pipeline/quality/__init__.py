"""Quality filtering: language ID, heuristic rules and fastText classifiers."""
