"""Backend choice: endpoints, health, and the router (filters → scorers → picker)."""
