"""Data files shipped inside the package (see README.md here for their origin and format)."""
