"""The benchmarks' smoke tests run with the rest of the suite; their costly ones are in
:data:`tests.support.costly.MAIN`."""
