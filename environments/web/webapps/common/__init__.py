"""Static pages of the common web app (a package only so its files ship as package data)."""
