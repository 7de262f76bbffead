"""Human in the loop: ask_user questions, plan review, slash commands."""
