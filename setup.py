"""Maps the top-level folders onto one distribution: mintgym, mintgym.action_spaces, mintgym.environments,
mintgym.agents and mintgym.evals (DESIGN.md section 1). Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

ROOTS = {
    "mintgym": "mintgym",
    "mintgym.action_spaces": "action_spaces",
    "mintgym.environments": "environments",
    "mintgym.agents": "agents",
    "mintgym.evals": "evals",
}

packages: list[str] = []
for name, folder in ROOTS.items():
    packages.append(name)
    # Namespace discovery: a folder of plain scripts without __init__.py (environments/desktop/shim, copied
    # into desktop sessions) is still a package to setuptools, so it is listed rather than warned about.
    subs = find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"])
    packages.extend(f"{name}.{sub}" for sub in subs)

setup(packages=packages, package_dir=ROOTS)
