"""The run's single decisions: the route, batching after a failed create, polling, backoff, rate limits, the breaker, resume, spend and the budget, the plan."""
