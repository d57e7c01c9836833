"""The pure stations of docs/pipeline.md: postprocess → pack → assemble → project."""
