# libFuzzer targets (tests/fuzz/README.md).  Owned by the fuzzing work; included by the Makefile.
.PHONY: fuzz
fuzz:
	@echo "no fuzz targets yet"
