"""The ``ioa-check`` command line: a thin shell over the library."""
