"""Maps the top-level folders onto one distribution: mintgym, mintgym.action_spaces, mintgym.environments,
mintgym.agents and mintgym.evals (DESIGN.md section 1). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

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
    packages.extend(f"{name}.{sub}" for sub in find_packages(folder))

setup(packages=packages, package_dir=ROOTS)
