"""What the user asked to judge: a job's items and their columns, the custom_id of each request,
sets of ids, judge designs and how an item's answers fold back into one verdict.

Decides: what a valid input line is, an item's custom_id, how many requests an item asks and how
their answers make one verdict. May import: nothing of judgecore outside this package.

Modules: `parsing` (input lines into items, checked once), `conversations` (the shape of a line's
`messages`), `nesting` (how deep a line may nest),
`items` (`Item`, `Items`), `ids` (custom_ids), `idsets` (sets of ids as positions), `seen` (whether
ids repeat, told from 8 bytes an id), `ints` and
`texts` (immutable integer and text columns), `columns` (sparse columns, views by position),
`designs` (samples, pairwise, panels), `consensus` (an item's answers folded into one verdict),
`errors` (the core's typed errors), `when` (`--deadline`'s times: a duration from the start or an ISO 8601 instant), `knobs` (the one table of knobs: every flag's and
`JUDGECORE_*` variable's type and range), `near` (the nearest name to a typo, for its hint).
"""
