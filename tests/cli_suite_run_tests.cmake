# CLI tests of `tierpool suite run` (docs/chapters/suite.md).
