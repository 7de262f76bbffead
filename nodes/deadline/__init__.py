"""The deadline: a run stops cleanly, with what it has, once ``deadline_s`` seconds have passed since its goal
was given."""
