"""Environment implementations, one subpackage per domain: web, desktop, android, pytool."""
