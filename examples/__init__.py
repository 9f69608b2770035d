"""Two agents of their own, built on handloop as a user would (rooms.py in English, orders.py in Chinese)."""
