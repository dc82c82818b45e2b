"""OSWorld's task JSON read natively and run on the desktop domain, offline."""
