"""The OSWorld task pack of the desktop domain: OSWorld's task JSON read natively (loader, availability),
its config steps and getters run in the session (steps, getters, chrome, files), and its scoring with
OSWorld's own metric functions (metrics, metric_loader, scoring). Results in OSWorld's own shape are
written by :mod:`mintgym.evals.osworld.results`."""
