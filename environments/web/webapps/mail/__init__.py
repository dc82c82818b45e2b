"""Static pages of the mail web app (a package only so its files ship as package data)."""
