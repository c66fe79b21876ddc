"""A run's knobs: `JobSettings` (the defaults of CONTRACT.md and their checks), the sync path's
settings drawn from it and the environment, and the budget as it stands in the checkpoint."""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from adapters.providers.openai import missing_extra
from adapters.providers.registry import provider_of
from adapters.usage import DEFAULT_MODEL, UsageError
from judgecore.decide.routing import RoutePolicy
from judgecore.decide.spend import price_for
from judgecore.job.designs import Design, DesignError, judge_identity
from judgecore.job.ids import sha256
from judgecore.job.items import RoutePath
from judgecore.job.knobs import KNOBS
from judgecore.job.knobs import check as check_knobs
from judgecore.job.when import When
from judgecore.results.status import ACCOUNT_REFUSED
from judgecore.results.verdicts import VerdictSpec, spec_from_json
from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS
from judgecore.wire.models import (
    Deprecated,
    ModelPrice,
    Retired,
    Thinking,
    default_max_tokens,
    max_tokens_problem,
    standing,
    thinking_problem,
    thinking_room_problem,
    unknown_model_problem,
)
from judgecore.wire.models import price_for as _table_price
from judgecore.wire.providers import JudgeNameError, openai_model_problem, parse_judge

#: how a pairwise job reads the judge's choice when it has no `--verdict` (the last `Winner: X`)
#: (a choice the default labels know, after "winner" and any punctuation: `Winner: [[B]]`, `**Winner:** tie`,
#: `Winner: Assistant A`; never the next word of a rationale saying "B is the winner because")
PAIRWISE_PATTERN = r"(?i:\bwinner)\W*(?:(?i:assistant)\s*)?(?P<score>A|B|(?i:tie))\b"


@attrs.frozen(kw_only=True)
class JobSettings:
    """Every knob of a run, with the defaults of CONTRACT.md."""

    model: str = attrs.field(default=DEFAULT_MODEL, converter=lambda v: _model_id(v))
    #: `--thinking adaptive|off|N` (a `Thinking`, or the flag's text, or N as an int); None: the
    #: request omits `thinking` and the model does what it does by default.
    thinking: Thinking | None = attrs.field(default=None, converter=attrs.converters.optional(Thinking.parse))
    #: A panel of judges (`--judge MODEL`, repeated; see `template` below). Declared before
    #: `max_tokens`, whose default is each judge's.
    judges: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _judges(v))
    #: Default: 1,024, or room for thinking (16,000) where the model thinks (`default_max_tokens`);
    #: for a panel, room for thinking when any judge thinks (one max_tokens goes to every judge).
    max_tokens: int = attrs.field(
        default=attrs.Factory(
            lambda self: max(default_max_tokens(m, self.thinking) for m in (self.judges or (self.model,))),
            takes_self=True,
        )
    )
    force: RoutePath | None = None
    sync_threshold: int = 2000
    otpm: int | None = None
    max_batch_requests: int = MAX_REQUESTS
    max_batch_bytes: int = MAX_BYTES
    poll_interval: float = 60.0
    grace: float = 1800.0
    concurrency: int | None = None
    max_attempts: int = 3
    seed: int | None = None
    #: How answers are read into verdicts (`--verdict FILE`); None: no verdicts.
    verdict: VerdictSpec | None = None
    #: A hard cap in US dollars (`--budget USD`); None: no cap.
    budget: float | None = None
    #: Send a model id judgecore's table does not list (`--allow-unknown-model`: a model newer than
    #: this judgecore); without it, an unknown id is refused before anything is sent, with the
    #: nearest id the table knows. Never part of the manifest.
    allow_unknown_model: bool = attrs.field(default=False, eq=False)
    #: `--keep-files`: an OpenAI batch's input, output and error files stay on the account once
    #: harvested (by default they are deleted). Never part of the manifest.
    keep_files: bool = attrs.field(default=False, eq=False)
    #: `--deadline WHEN` (`judgecore.job.when.When`): this run's alone, never in the manifest nor kept
    #: for a rerun; the run resolves a duration against its start (None: no deadline).
    deadline: When | None = None
    #: The date deprecations and retirements are judged on; None: today's UTC date, read by the shell
    #: when the job is planned. Never part of the manifest.
    today: datetime.date | None = attrs.field(default=None, eq=False)
    #: Judge designs (`judgecore.job.designs`, docs/designs.md): the user turn's template (its text, with
    #: `{field}` placeholders), K samples per item, the two fields of a pairwise item, a panel of judges.
    template: str | None = None
    samples: int = 1
    pairwise: tuple[str, str] | None = attrs.field(
        default=None, converter=attrs.converters.optional(lambda v: _pair(v))
    )

    @property
    def plain(self) -> bool:
        """One request per item, the item's own: no design knob set (what `design` tells as `single`
        with no template, without importing `judgecore.job.designs`: a plain dry run never does)."""
        return (
            self.template is None
            and type(self.samples) is int
            and self.samples == 1
            and self.pairwise is None
            and not self.judges
        )

    @property
    def design(self) -> Design:
        """The job's design (one request per item without the design knobs)."""

        return Design(
            template=self.template, samples=self.samples, pairwise=self.pairwise, judges=self.judges
        )

    @property
    def models(self) -> tuple[str, ...]:
        """Every model the job asks: the panel's judges, else the job's model."""
        return self.judges or (self.model,)

    @property
    def request_model(self) -> str:
        """The model of the job's request template (a panel's first judge)."""
        return self.judges[0] if self.judges else self.model

    def __attrs_post_init__(self) -> None:
        _check_types(self)
        knobs = check_knobs({k.name: getattr(self, k.name) for k in KNOBS if k.name in _KNOB_FIELDS})
        max_tokens = max_tokens_problem(self.model, self.max_tokens) if knobs is None else None
        thinking = (
            thinking_problem(self.model, self.thinking, self.max_tokens)
            if self.thinking is not None
            else None
        )
        checks = [
            (bool(self.model.strip()), "--model must be a non-empty model id"),
            (
                not any(c.isspace() for c in self.model),
                f"--model {self.model!r}: a model id has no spaces (e.g. {DEFAULT_MODEL!r})",
            ),
            (knobs is None, knobs),  # every number in its range (`judgecore.job.knobs`, as the flags)
            (max_tokens is None, f"--max-tokens: {max_tokens}"),
            (thinking is None, f"--thinking: {thinking}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        if not self.plain:  # a plain design is one request per item: nothing to check
            try:
                self.design  # noqa: B018 (checked here, once: exit 2 before anything is sent)
            except DesignError as exc:
                raise ValueError(str(exc)) from None
        for flag, model in [("--judge", j) for j in self.judges] or [("--model", self.model)]:
            if (problem := judge_problem(model, self.on_date())) is not None:
                raise ValueError(f"{flag}: {problem} (nothing was sent)")
        if self.force == "batch" and not any(provider_of(m).batch for m in self.models):
            raise ValueError(
                f"--force-batch: the batch route is not built for {self.request_model} yet; "
                "it judges on the sync route (nothing was sent)"
            )
        if not self.allow_unknown_model:  # a typo costs no request (and a new model is said to be one)
            for flag, model in [("--judge", j) for j in self.judges] or [("--model", self.model)]:
                if ":" in model:  # another provider's, checked against its own table above
                    continue
                if (unknown := unknown_model_problem(model)) is not None:
                    raise ValueError(
                        f"{flag}: {unknown} (nothing was sent; for a model newer than judgecore's table, "
                        "add --allow-unknown-model)"
                    )
        if self.budget is not None and not self.judges and _table_price(self.model) is None:
            raise ValueError(self._unpriced("--model", self.model, "--budget needs the model's prices"))
        if self.pairwise is not None and self.verdict is None:  # the judge's choice, read by default
            object.__setattr__(self, "verdict", spec_from_json({"pattern": PAIRWISE_PATTERN}))
        for judge in self.judges:
            problem = max_tokens_problem(judge, self.max_tokens)
            if problem:
                raise ValueError(f"--judge {judge}: {problem}")
            if self.thinking is not None and (
                problem := thinking_problem(judge, self.thinking, self.max_tokens)
            ):
                raise ValueError(f"--judge {judge}: --thinking: {problem}")
            if self.budget is not None and _table_price(judge) is None:
                raise ValueError(self._unpriced("--judge", judge, "--budget needs every judge's prices"))

    @property
    def route_policy(self) -> RoutePolicy:
        policy = provider_of(self.request_model).route_policy(self.sync_threshold)
        # a judge's provider whose batch route is not built goes sync; a panel with a judge whose
        # provider has one routes by size, its other judges on their sync routes (`adapters.run.panels`)
        if policy.sync_only is not None and any(provider_of(m).batch for m in self.models):
            policy = attrs.evolve(policy, sync_only=None)
        return policy

    def manifest(self, rubric: str | None) -> dict[str, Any]:
        """What makes two runs the same job: anything that changes what a request asks."""
        digest = sha256(rubric.encode()).hexdigest()[:32] if rubric else None
        manifest: dict[str, Any] = {
            "model": judge_identity(self.model),  # a served model's URL is not part of the job
            "max_tokens": self.max_tokens,
            "rubric_sha256": digest,
        }
        schema = self.verdict.schema_digest if self.verdict is not None else None
        if schema is not None:  # only when set, so checkpoints made before verdicts existed still match
            manifest["verdict_schema_sha256"] = schema
        if self.thinking is not None:  # likewise: only when set
            manifest["thinking"] = self.thinking.param()
        template = sha256(self.template.encode()).hexdigest()[:32] if self.template is not None else None
        if not self.plain:  # likewise: only what is set (a plain design sets nothing)
            manifest.update(self.design.manifest(template))
        return manifest

    def _unpriced(self, flag: str, model: str, need: str) -> str:
        """Why a budget cannot be kept with `model`: it is retired (its replacement named, as a run
        without `--budget` says), or judgecore has no price for it."""
        if isinstance(gone := standing(model, self.on_date()), Retired):
            return f"{flag}: {gone}"
        return f"{need}, and judgecore has none for {model!r}"

    def on_date(self) -> datetime.date:
        """The date the job's model is judged on: `today`, or the shell's UTC date now."""
        return self.today or datetime.datetime.now(datetime.UTC).date()

    def warnings(self) -> tuple[str, ...]:
        """What the user should know before anything is sent (a deprecated model, too little room for
        thinking); a retired model is a `UsageError` instead (exit 2, naming the replacement)."""
        out: list[str] = []
        for model in self.models:
            flag = "--judge" if self.judges else "--model"
            match standing(model, self.on_date()):
                case Retired() as retired:
                    raise UsageError(f"{flag}: {retired}")
                case Deprecated() as deprecated:
                    out.append(str(deprecated))
                case None:
                    pass
            if model.startswith("served:") and self.budget is not None:
                out.append(
                    f"{model} is self-hosted: its spend is $0 and --budget does not cap it "
                    "(the budget caps the other judges)"
                )
            room = thinking_room_problem(model, self.thinking, self.max_tokens)
            if room is not None:
                out.append(room)
        return tuple(out)


@attrs.frozen
class Fatal:
    """Why a run stopped early (exit 4): a fatal API configuration, or an account state (the API
    refused the account: on hold, a spend limit, billing; nothing quarantined). One line for the user."""

    reason: str

    @property
    def account(self) -> bool:
        """The API refused the account (`judgecore.results.outcomes.stop_line`): the items stay pending."""
        return self.reason.startswith(ACCOUNT_REFUSED)

    def __str__(self) -> str:
        return self.reason


@attrs.frozen
class BatchCaps:
    """The most one sub-batch holds: the settings' `max_batch_requests` / `max_batch_bytes`, clamped
    to the provider's limits (`adapters.providers.registry.Provider.batch_limits`)."""

    requests: int
    bytes: int


def batch_caps(settings: JobSettings, model: str | None = None) -> BatchCaps:
    """The one clamp of a sub-batch's size, used alike by the run and by the dry run: OpenAI's files
    hold at most 8,000 lines and 190,000,000 bytes (judgecore's caps), Anthropic's creates 8,000 requests
    and 250,000,000 bytes, whatever larger `--max-batch-*` asked for. `model`: the judge whose
    provider's batch route is meant (default: the job's request model)."""
    limits = provider_of(model or settings.request_model).batch_limits
    return BatchCaps(
        requests=min(settings.max_batch_requests, limits.requests),
        bytes=min(settings.max_batch_bytes, limits.bytes),
    )


def price_of(settings: JobSettings) -> ModelPrice | None:
    """The model's prices when a budget needs them (`JobSettings` refuses a budget without them); for
    a panel, the dearest judge's rates (an upper bound of every request's cost, so the cap holds)."""

    if settings.budget is None:
        return None
    if not settings.judges:
        return price_for(settings.model)
    prices = [p for p in map(price_for, settings.judges) if p is not None]
    if not prices:
        return None

    return ModelPrice(
        input_per_mtok=max(p.input_per_mtok for p in prices),
        output_per_mtok=max(p.output_per_mtok for p in prices),
        cache_read=max(p.cache_read for p in prices),
        long_prompt=None
        if all(p.long_prompt is None for p in prices)
        else (
            # over the first judge's tier, every judge's rates for a prompt that long: a tier's where
            # it has one, else its only rates (a judge without a tier costs the same at any length)
            min(p.long_prompt[0] for p in prices if p.long_prompt),
            max(max(p.long_prompt[1] if p.long_prompt else 0.0, p.input_per_mtok) for p in prices),
            max(max(p.long_prompt[2] if p.long_prompt else 0.0, p.output_per_mtok) for p in prices),
        ),
    )


#: The fields of `JobSettings` that are knobs of `judgecore.job.knobs` (`samples` is the design's to check)
_KNOB_FIELDS = frozenset(
    {"max_tokens", "sync_threshold", "otpm", "max_batch_requests", "max_batch_bytes"}
    | {"poll_interval", "grace", "concurrency", "max_attempts", "budget"}
)

#: The fields of `JobSettings` that take a whole number, and those that take any real number
_WHOLE = ("max_tokens", "sync_threshold", "otpm", "max_batch_requests", "max_batch_bytes", "concurrency")
_WHOLE_MORE = ("max_attempts", "seed")  # `samples` is the design's to check (`judgecore.job.designs`)
_REAL = ("poll_interval", "grace", "budget")


def _check_types(settings: JobSettings) -> None:
    """Each field of the type it takes (a `TypeError` naming it), before any value is compared: a
    `max_tokens="512"` failed as `'>=' not supported between instances of 'str' and 'int'`, a
    `force="fast"` was taken as a route and sent."""

    def refuse(name: str, takes: str, value: object) -> TypeError:
        return TypeError(f"JobSettings({name}=...) must be {takes}, got {type(value).__name__} {value!r}")

    for name in (*_WHOLE, *_WHOLE_MORE):
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not hasattr(value, "__index__")):
            raise refuse(
                name, "a whole number (an int)" + ("" if name == "max_tokens" else " or None"), value
            )
    for name in _REAL:
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise refuse(name, "a number of " + ("US dollars" if name == "budget" else "seconds"), value)
    if settings.force not in (None, "sync", "batch"):
        raise ValueError(f"JobSettings(force=...) must be 'sync', 'batch' or None, got {settings.force!r}")
    if settings.template is not None and not isinstance(settings.template, str):
        raise refuse("template", "the template's text (a str) or None", settings.template)
    if settings.verdict is not None and not isinstance(settings.verdict, VerdictSpec):
        raise refuse("verdict", "a VerdictSpec (judgecore.spec_from_json(...)) or None", settings.verdict)


def judge_problem(name: str, today: datetime.date) -> str | None:
    """Why a `--model` or `--judge` name cannot be sent (one line), or None: a provider judgecore does
    not know (the providers named), an OpenAI model OpenAI's table does not list or has shut down, a
    provider whose route is not built yet, or a plain install without the provider's SDK extra."""
    try:
        judge = parse_judge(name)
    except JudgeNameError as exc:
        return str(exc)
    if judge.provider == "anthropic":
        return None
    if judge.provider == "served":
        return missing_extra()
    if (problem := openai_model_problem(judge.model, today)) is not None:
        return problem
    return missing_extra()


def _model_id(value: Any) -> str:
    """The model id, a str (checked as it is set: the default `max_tokens` is read from it)."""
    if not isinstance(value, str):
        raise TypeError(
            f"JobSettings(model=...) must be a model id (a str), got {type(value).__name__} {value!r}"
        )
    return value


def _judges(value: Any) -> tuple[str, ...]:
    """The panel's model ids (one string is refused: it would be a panel of its letters)."""
    if isinstance(value, str):
        raise ValueError(
            f"JobSettings(judges=...) takes a sequence of model ids, e.g. ({value!r}, {DEFAULT_MODEL!r}), "
            f"not one string: got {value!r}"
        )
    return tuple(value)


def _pair(value: Any) -> tuple[str, ...]:
    """`--pairwise A,B` as a tuple (a string is split at its comma)."""
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(","))
    return tuple(value)


__all__ = ["BatchCaps", "Fatal", "JobSettings", "batch_caps", "price_of"]
