"""The pure stations of SPEC 4: postprocess → pack → assemble → project."""
