"""Benchmarks: scripted worlds and personas, run side by side against replangraph and a plain ReAct agent."""
