"""The providers' ports: each provider's package holds every byte of its wire and SDK."""
