"""Pipeline stages. Their order is the list in proxy/app.py."""
