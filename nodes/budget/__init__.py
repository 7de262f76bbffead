"""The budget: a run stops cleanly once its model calls have spent ``token_budget`` tokens or
``cost_budget_usd`` dollars."""
