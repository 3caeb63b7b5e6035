# Reference bandwidth matrices from R ks with binned = TRUE for quakes (d = 4; Hpi bins on ks:::default.bgridsize(4) = 15^4 nodes),
# for tests/test_binned_matrix.py.  Kept apart from ks_binned_reference.R because it is slow: on the
# shared 2-core machine Hpi took many minutes.  Run from the repository root:
#   nice -n 15 Rscript tests/refdata/ks_binned_quakes_reference.R
# Writes tests/refdata/ks_binned_quakes_reference.json after each selector (R and ks versions, ks's
# default grid size and each selector's elapsed seconds recorded in it).
suppressMessages(library(ks))
suppressMessages(library(jsonlite))
out <- list(R = R.version.string, ks = as.character(packageVersion("ks")))
x <- as.matrix(read.csv(file.path("parzen/datasets", "quakes.csv")))
entry <- list(rows = nrow(x), bgridsize = ks:::default.bgridsize(ncol(x)))
save <- function(entry) {
  out[["quakes"]] <- entry
  write(toJSON(out, digits = I(15), auto_unbox = TRUE, pretty = TRUE), "tests/refdata/ks_binned_quakes_reference.json")
}
t0 <- proc.time()[["elapsed"]]
entry$Hpi <- Hpi(x, binned = TRUE)
entry$Hpi_seconds <- proc.time()[["elapsed"]] - t0
save(entry)
t0 <- proc.time()[["elapsed"]]
entry$Hpi_diag <- Hpi.diag(x, binned = TRUE)
entry$Hpi_diag_seconds <- proc.time()[["elapsed"]] - t0
save(entry)
