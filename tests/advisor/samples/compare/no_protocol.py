"""compare sample: does not define advisor_workload()."""
VALUE = 1
