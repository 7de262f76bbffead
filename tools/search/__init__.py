"""Web search: internet_search over any SearchProvider, with a keyless DuckDuckGo provider."""
