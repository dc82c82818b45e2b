"""Static pages of the book web app (a package only so its files ship as package data)."""
