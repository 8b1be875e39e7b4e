"""A tiny calculator whose tests fail (the example's fixture)."""


def add(a, b):
    return a - b


def mul(a, b):
    return a + b
