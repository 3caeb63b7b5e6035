# Reference values for parzen's kernel distribution function (tests/test_kcde.py):
#   Rscript tests/refdata/kcde_reference.R > tests/refdata/kcde_reference.json
# R ks 1.14.0: hpi.kcde(x, nstage = 2, binned = FALSE) is the bandwidth ks::kcde chooses for 1-D
# data (kcde itself calls it with binned = TRUE for d = 1); cdf = mean(pnorm((q - x) / h)), the
# kernel distribution function at the points; kcde = kcde(x, h, eval.points, binned = FALSE), ks's
# value, a left Riemann sum of the density on ks's 401-point grid (error of order its spacing).
suppressMessages(library(ks))
library(jsonlite)
sets <- list(
  faithful = read.csv("parzen/datasets/faithful.csv"),
  quakes = read.csv("parzen/datasets/quakes.csv")
)
out <- list(ks_version = as.character(packageVersion("ks")))
for (name in names(sets)) {
  df <- sets[[name]]
  cols <- list()
  for (col in names(df)) {
    x <- df[[col]]
    h <- ks:::hpi.kcde(x, nstage = 2, binned = FALSE)
    h_binned <- ks:::hpi.kcde(x, nstage = 2, binned = TRUE)
    q <- as.numeric(quantile(x, c(0.05, 0.25, 0.5, 0.75, 0.95)))
    Fq <- sapply(q, function(p) mean(pnorm((p - x) / h)))
    Fks <- kcde(x, h = h, eval.points = q, binned = FALSE)$estimate
    cols[[col]] <- list(h = h, h_binned = h_binned, points = q, cdf = Fq, kcde = Fks)
  }
  out[[name]] <- cols
}
cat(toJSON(out, digits = I(15), auto_unbox = TRUE, pretty = TRUE))
