"""Stand-alone example participant systems, devices and their own data for onsite.

The demo's sealed systems run with this directory as their workdir and read all of it:
nothing here may hold references or test data (the test-set generators are in datagen/).
"""
