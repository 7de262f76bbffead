"""Applications built on the library: the ``replangraph`` CLI, the offline demo and the Studio graph factory."""
