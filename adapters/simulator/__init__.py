"""A faithful local stand-in for the Anthropic Messages and Message Batches HTTP API.

The real `anthropic` SDK talks to it through `base_url`, either in-process (`sim_client`, `SimTransport`)
or over loopback HTTP (`serve`, `run_server_forever`). `Simulator` is the deterministic logic (time comes
only from its injected `clock`, a `() -> float`); `Scenario` holds its knobs. Tests and demos give it
the one fake clock, `adapters.run.clock.FakeClock` (calling it reads it).

In-process::

    sim = Simulator(Scenario(batch_seconds=0.5), clock=FakeClock())
    client = sim_client(sim)                      # AsyncAnthropic; async_=False for Anthropic

Over HTTP::

    with serve(Simulator(Scenario())) as server:  # real time.time clock by default
        client = anthropic.AsyncAnthropic(api_key="sk-sim", base_url=server.base_url)

The same port speaks OpenAI's wire (Chat Completions, Files, Batches, `/v1/models`) to the `openai`
SDK, and answers `served_models` as a vLLM server does (`openai_logic.py`; knobs in `OpenAIScenario`,
the `openai` field of `Scenario`)::

    client = openai_client(sim)                   # AsyncOpenAI in-process; async_=False for OpenAI
    client = openai.OpenAI(api_key="sk-sim", base_url=server.base_url + "/v1")

For a job of millions, `Scenario(lazy_batches=True)` (`judgecore simulator --lazy-batches`) keeps each
batch's requests on disk and makes its result lines as they are read (`lazy`): memory flat in the job.

Markers in the text of the last user message force an outcome (batch results and, where it makes sense,
sync): `[[sim:max_tokens]]`, `[[sim:invalid]]`, `[[sim:context]]` (every attempt); `[[sim:api_error]]`,
`[[sim:overloaded]]`, `[[sim:rate_limit]]`, `[[sim:expired]]`, `[[sim:canceled]]` (first attempt only;
add `*`, e.g. `[[sim:api_error*]]`, for every attempt). Sync: invalid/context -> 400, api_error -> 500,
overloaded -> 529, rate_limit -> 429, max_tokens -> stop_reason "max_tokens"; expired/canceled are ignored.

Modules. The logic, pure of I/O: `logic` (the Anthropic side's state machine), `openai_logic` (Chat
Completions, Files, Batches, served vLLM-like models), `answers` (token counts, answers, markers,
params validation), `cache` (prompt-cache accounting), `ratelimit` (per-minute buckets and their
headers), `latency` (how long a batch takes), `subset` (the structured-outputs schema subset),
`rubric_format` and `verdict_lines` (the verdict a rubric asks for), `designs` and `selfpref` (the judge
of a design; a judge biased toward its family). Values: `scenario` and `openai_scenario` (the knobs),
`schedule` (a fault schedule), `wire` and `openai_wire` (the wire formats, error bodies included).
The shell: `lazy` (a lazy batch's requests on disk, its results made as
read), `server` (loopback HTTP), `transport` and `openai_transport`
(in-process clients), `cli` and `openai_cli` (`judgecore simulator`'s options).
"""
