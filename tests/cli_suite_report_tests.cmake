# CLI tests of `tierpool suite report` (docs/chapters/suite.md).
