"""The batch audit of capability registrations (``ioa-check audit``): the run, its inputs,
its checkpoint, kinds of registrations judged once, and the Dask runner."""
