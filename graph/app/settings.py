"""Settings: what the graph is built from. `run` records them in each checkpoint's metadata and `resume`
reads them back, so `replangraph resume --thread ID` needs none of the flags the run was started with. No secret
is recorded (the base URL's password and key parameters are left out), and a recorded server is not used unless
the environment names the same one or ``--base-url`` is given again (`resumed_base_url`)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from typing import Any

from replangraph.app.feature_cli import feature_flags
from replangraph.app.loading import UsageError
from replangraph.app.server import BASE_URL_ENV, KEY_ENV, base_url, url_label, url_without_secrets
from replangraph.config import AgentConfig

SETTINGS_KEY = "replangraph_cli"
"""Checkpoint metadata key holding the CLI settings of the run (JSON), so ``resume`` rebuilds the same graph."""

DEFAULTS: dict[str, Any] = {
    "model": None,
    "base_url": None,
    "tools": [],
    "agents": None,
    "max_steps": AgentConfig().max_steps,
    "concurrency": AgentConfig().max_concurrency,
    "max_output_tokens": None,
    "context_window": None,
    **{flag.dest: AgentConfig.model_fields[flag.field].default for flag in feature_flags()},  # the features' own
}


def chosen_settings(args: argparse.Namespace, recorded: Mapping[str, Any]) -> dict[str, Any]:
    """Each setting from its flag when given, else as the run recorded it, else its default."""
    settings = {}
    for name, default in DEFAULTS.items():
        given = getattr(args, name, None)
        settings[name] = given if given not in (None, []) else recorded.get(name, default)
    return settings


def stored_settings(settings: Mapping[str, Any]) -> str:
    """``settings`` as the checkpoint metadata records them (JSON), without the secrets of the base URL."""
    return json.dumps({**settings, "base_url": url_without_secrets(settings.get("base_url"))}, sort_keys=True)


def resumed_base_url(given: str | None, recorded: str | None) -> str | None:
    """The ``base_url`` setting of a resumed run: ``--base-url`` when given; else None (the environment's server,
    with its credentials) when the run recorded none or the environment's. A recorded server the environment does
    not name is a UsageError: the database could have been changed to send the API key elsewhere."""
    if given or not recorded:
        return given or None
    current = os.environ.get(BASE_URL_ENV) or None
    if url_without_secrets(recorded) == url_without_secrets(current):
        return None
    now = f"${BASE_URL_ENV} names {url_label(current)}" if current else f"${BASE_URL_ENV} is not set (OpenAI)"
    raise UsageError(
        f"The run was recorded with the model server {url_label(recorded)}, but {now}. A server read from the "
        f"database is not used on its own, as it could send your API key elsewhere: pass --base-url "
        f"{url_label(recorded)} (with its credentials, if any) to resume with it, or --base-url with the server "
        "you mean."
    )


def recorded_settings(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings a CLI run recorded in a checkpoint's metadata ({} for a thread started elsewhere)."""
    try:
        found = json.loads((metadata or {}).get(SETTINGS_KEY) or "{}")
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in found.items() if k in DEFAULTS} if isinstance(found, dict) else {}


AGENT_FIELDS = {
    "max_steps": "max_steps",
    "concurrency": "max_concurrency",
    "max_output_tokens": "max_output_tokens",
    "context_window": "context_window",
    **{flag.dest: flag.field for flag in feature_flags()},  # each feature's flags (its folder's cli.py)
}
"""The settings that are `AgentConfig` fields (a run's limits and checks, not what the graph is built from), by
the field each sets."""


def agent_config(settings: Mapping[str, Any]) -> AgentConfig:
    return AgentConfig(
        **{field: settings.get(name) for name, field in AGENT_FIELDS.items()},
        pause_when_model_down=True,  # a run can always be resumed here: a lost server pauses it
    )


def given_agent_config(args: argparse.Namespace) -> AgentConfig | None:
    """The run-time settings given as flags, as an `AgentConfig` that sets those fields only (a run's context
    overrides the graph's settings for the fields it sets); None when no flag gave one."""
    given = {field: getattr(args, name, None) for name, field in AGENT_FIELDS.items()}
    given = {field: value for field, value in given.items() if value is not None}
    return AgentConfig(**given) if given else None


def model_missing(settings: Mapping[str, Any]) -> bool:
    return not (os.environ.get(KEY_ENV) or base_url(settings))
