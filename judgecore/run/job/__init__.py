"""The whole job as a machine: probe, keep or decide the route, run the batch part, run the sync part, write the output."""
