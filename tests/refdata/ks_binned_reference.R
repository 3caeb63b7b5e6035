# Reference bandwidth matrices from R ks with binned = TRUE (its default for d <= 4), for
# tests/test_binned_matrix.py.  Run from the repository root:  Rscript tests/refdata/ks_binned_reference.R
# Writes tests/refdata/ks_binned_reference.json (R and ks versions, and ks's default grid sizes, recorded in it).
suppressMessages(library(ks))
suppressMessages(library(jsonlite))
out <- list(R = R.version.string, ks = as.character(packageVersion("ks")))
for (name in c("faithful", "tempb")) {   # quakes (d = 4) left out: its binned Hpi and Hpi.diag ran over 7 minutes
  x <- as.matrix(read.csv(file.path("parzen/datasets", paste0(name, ".csv"))))
  if (name == "tempb") x <- x[1:2000, ]   # the rows of ks_plugin_reference.json's exact values
  entry <- list(rows = nrow(x), gridsize = ks:::default.gridsize(ncol(x)))
  entry$Hpi <- Hpi(x, binned = TRUE)
  entry$Hpi_diag <- Hpi.diag(x, binned = TRUE)
  out[[name]] <- entry
}
write(toJSON(out, digits = I(15), auto_unbox = TRUE, pretty = TRUE), "tests/refdata/ks_binned_reference.json")
