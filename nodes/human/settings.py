"""Human in the loop's settings (they pause the run: the graph needs a checkpointer)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Settings(BaseModel):
    max_clarifications: int = Field(
        3, ge=0, description="Questions one subtask may ask the user with ask_user; 0: the tool is not offered."
    )
    question_prefix: str = Field("Please confirm: ", description="Put before each question shown to the user.")
    cancel_word: str = Field("/cancel", min_length=1, description="An answer that cancels the run.")
    approve_plan: bool = Field(False, description="Pause after planning until the user approves or edits the plan.")
