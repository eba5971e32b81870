"""``numba-metal advisor``: which of my functions would actually benefit from numba-metal?

Built only on numba-metal's public API, the modules of :data:`PUBLIC_API` (a test checks every
import). Modules, one concern each, importing one another without cycles:

``outcomes``   the exit-code table and the errors that stop a command
``cli``        argument parsing, output formats
``schema``     the JSON documents, their schemas, and the calibration keys
``console``    rendering helpers over ``rich`` (terminal / text)
``rules``      what ``scan`` recognises: decorators, patterns, blockers and changes
``scan``       static analysis and the static score
``compat``     the compile check ``scan`` runs (``metal.compile_msl``, no device)
``signatures`` reading Numba signature strings without evaluating them
``sourcefile`` reading the files scan is given without running anything they name
``workload``   the ``advisor_workload()`` protocol shared by ``compare`` and ``profile``
``compare``    cold / warm / steady-state measurement with a correctness gate
``runner``     the workload's side of ``compare``, in a process of its own
``measure``    timing statistics and the device description
``sampler``    the pure-Python sampling profiler
``profile``    running a program with runtime events and the sampler
``flame``      flame graphs and the differential flame graph
``timeline``   the CPU/GPU timeline and idle gaps
``report``     rendering a profile document (``profile`` and ``report``)
``calibrate``  device measurements written to the user's cache
``roofline``   the classification that reads those measurements
"""

#: The numba-metal modules the advisor may import.
PUBLIC_API = ("numba_metal", "numba_metal.metal", "numba_metal.errors", "numba_metal.profiling",
              "numba_metal.random")
