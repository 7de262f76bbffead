"""The completion check (``verify_results``): judges each answer and queues what is missing."""
