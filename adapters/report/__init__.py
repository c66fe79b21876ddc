"""The judge report (`judgecore summary --html FILE`, and the demo): one self-contained HTML file.

- `job_report`: `judgecore summary`: the job's report read from its checkpoint (`JobReport`);
- `gather`: what the report reads from the checkpoint besides the summary (provenance, examples);
- `plots`: the plots, one colour per group;
- `sections`: each section's HTML;
- `page`: the page, its order and its CSS.

May import: `adapters.run`, `adapters.files`,
`adapters.checkpoint`, `adapters.usage`, `judgecore` (and `adapters.cli.parser`, for the command lines
it prints).

This module imports nothing: `page` (and `plots`, matplotlib) is loaded only for an HTML report, by the
command's dispatch (`judgecore summary --html`) or the demo.
"""
