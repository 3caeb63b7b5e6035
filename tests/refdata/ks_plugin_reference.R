# Reference bandwidth matrices for parzen's plugin_H, plugin_diag and scv_H, from R ks (exact: binned = FALSE).
# Run from the repository root:  Rscript tests/refdata/ks_plugin_reference.R
# Writes tests/refdata/ks_plugin_reference.json (R and ks versions recorded in it).
suppressMessages(library(ks))
suppressMessages(library(jsonlite))

# ks 1.14's gsamse at stage 2 reads Psi_6 entries by their position in the list of distinct
# multi-indices; this copy reads the entries the formula names (parzen's follow_ks = FALSE).
gsamse_formula <- function(Sigma.star, n, modr, nstage = 1, psihat = NULL) {
  if (nstage != 2) return(gsamse_ks(Sigma.star, n, modr, nstage, psihat))
  d <- ncol(Sigma.star)
  K <- ks:::dmvnorm.deriv(x = rep(0, d), deriv.order = modr, Sigma = diag(d), add.index = TRUE, deriv.vec = FALSE)
  K <- K$deriv[apply(K$deriv.ind, 1, ks:::is.even)]
  derivt4 <- ks:::dmvnorm.deriv(x = rep(0, d), deriv.order = 4, add.index = TRUE, deriv.vec = FALSE, only.index = TRUE)
  derivt6v <- ks:::dmvnorm.deriv(x = rep(0, d), deriv.order = 6, add.index = TRUE, deriv.vec = TRUE, only.index = TRUE)
  psi <- numeric()
  for (i in 1:nrow(derivt4)) {
    r <- derivt4[i, ]
    if (ks:::is.even(r)) {
      A3psi <- 0
      for (j in 1:d) A3psi <- A3psi + psihat[head(ks:::which.mat(r = r + 2 * ks:::elem(j, d), mat = derivt6v), 1)]
      psi <- c(psi, A3psi)
    }
  }
  B1 <- (2 * modr + 2 * d) * sum(K^2); B2 <- (modr + d - 2) * sum(K * psi); B3 <- sum(psi^2)
  gamma1 <- (-B2 + sqrt(B2^2 + 4 * B1 * B3)) / (2 * B1)
  (gamma1 * n)^(-1 / (modr + d + 2))
}
gsamse_ks <- ks:::gsamse

timed <- function(expr) { t <- system.time(v <- expr)[["elapsed"]]; list(value = v, seconds = t) }
out <- list(R = R.version.string, ks = as.character(packageVersion("ks")))
for (name in c("faithful", "quakes", "tempb")) {
  x <- as.matrix(read.csv(file.path("parzen/datasets", paste0(name, ".csv"))))
  if (name == "tempb") x <- x[1:2000, ]   # exact SCV in R is slow: the first 2000 rows
  entry <- list(rows = nrow(x))
  entry$Hpi <- Hpi(x, binned = FALSE)
  entry$Hpi_diag <- Hpi.diag(x, binned = FALSE)
  entry$Hscv <- Hscv(x, binned = FALSE)
  if (ncol(x) == 2) {
    assignInNamespace("gsamse", gsamse_formula, "ks")
    entry$Hpi_formula <- Hpi(x, binned = FALSE)
    entry$Hpi_diag_formula <- Hpi.diag(x, binned = FALSE)
    assignInNamespace("gsamse", gsamse_ks, "ks")
  }
  out[[name]] <- entry
}
write(toJSON(out, digits = I(15), auto_unbox = TRUE, pretty = TRUE), "tests/refdata/ks_plugin_reference.json")
