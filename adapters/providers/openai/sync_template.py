"""The sync route's template for an OpenAI judge: the job's `RequestTemplate` (Anthropic's shape, what
the plan and the checkpoint are built on) read once into an `OpenAITemplate`, so the sync run asks
`params(max_tokens, messages_json)` of it as of the Anthropic template. Pure (no SDK)."""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from adapters.providers.openai.body import OpenAITemplate
from judgecore.values import frozen
from judgecore.wire.providers import parse_judge
from judgecore.wire.requests import RequestTemplate


def _rubric(template: RequestTemplate) -> str | None:
    """The rubric's text, from the template's system block list (None without a rubric)."""
    if template.system_json is None:
        return None
    return "".join(b.get("text", "") for b in orjson.loads(template.system_json)) or None


def _schema(template: RequestTemplate) -> dict[str, Any] | None:
    """The verdict schema the template's requests carry (its structured-output format), or None."""
    if template.output_config_json is None:
        return None
    schema = (orjson.loads(template.output_config_json).get("format") or {}).get("schema")
    return schema if isinstance(schema, dict) else None


def openai_template(template: RequestTemplate) -> OpenAITemplate:
    """The job's template (Anthropic's shape) as OpenAI's: the rubric as the system message, the verdict
    schema as a strict `response_format`, the model's own name (`openai:gpt-5-mini` -> `gpt-5-mini`)."""
    return OpenAITemplate.build(
        model=parse_judge(template.model).model,
        max_completion_tokens=template.max_tokens,
        rubric=_rubric(template),
        schema=_schema(template),
    )


@frozen
class OpenAISyncTemplate:
    """`RequestTemplate`'s sync interface (`model`, `system_json`, `with_model`, `params`) over
    Chat Completions: the rubric as the system message, `max_completion_tokens`, the verdict schema as a
    strict `response_format`. `model` stays the judge's name as given (`openai:gpt-5-mini`)."""

    base: RequestTemplate
    _body: OpenAITemplate = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_body", openai_template(self.base))

    @property
    def model(self) -> str:
        return self.base.model

    @property
    def system_json(self) -> bytes | None:
        """The rubric's bytes (the cost bound counts them as the cached prefix)."""
        return self.base.system_json

    @property
    def max_tokens(self) -> int:
        return self.base.max_tokens

    def with_model(self, model: str) -> OpenAISyncTemplate:
        return self if model == self.base.model else OpenAISyncTemplate(self.base.with_model(model))

    def params(self, max_tokens: int | None, messages_json: bytes) -> dict[str, Any]:
        """The Chat Completions body of one request, as the SDK's keyword arguments."""
        return self._body.params(max_tokens, messages_json)


__all__ = ["OpenAISyncTemplate", "openai_template"]
