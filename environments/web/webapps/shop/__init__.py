"""Static pages of the shop web app (a package only so its files ship as package data)."""
