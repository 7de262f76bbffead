"""Nothing is lost: the context monitor, fitting text into requests, kept text, the results workspace, compression."""
