"""Testing tools that ship with Ember: the random-graph fuzzer (`ember.testing.fuzz`)."""
