"""Web search: internet_search over any SearchProvider, with a keyless DuckDuckGo provider."""

from replangraph.tools.search.duckduckgo import DuckDuckGoHTML
from replangraph.tools.search.internet_search import internet_search_tool
from replangraph.tools.search.search_results import (
    SearchError,
    SearchPageError,
    SearchProvider,
    SearchRateLimited,
    SearchResult,
    SearchTimeout,
    SearchUnavailable,
)

__all__ = [
    "DuckDuckGoHTML",
    "SearchError",
    "SearchPageError",
    "SearchProvider",
    "SearchRateLimited",
    "SearchResult",
    "SearchTimeout",
    "SearchUnavailable",
    "internet_search_tool",
]
