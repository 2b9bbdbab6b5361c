"""Scores of predictions that the estimators and the command line share."""
from __future__ import annotations

import numpy as np

__all__ = ["balanced_accuracy"]


def balanced_accuracy(y_true, y_pred):
    """Balanced accuracy: the mean, over the classes present in ``y_true``, of the share of
    that class's rows predicted as it (the mean recall; Brodersen et al., "The balanced
    accuracy and its posterior distribution", ICPR 2010).  Equal to scikit-learn's
    ``balanced_accuracy_score`` without sample weights; a class predicted but absent from
    ``y_true`` only lowers the recall of the classes it was confused with.

    Parameters
    ----------
    y_true, y_pred : 1-D array-like
        True and predicted labels.

    Returns
    -------
    float
        The mean over the classes present in ``y_true`` of the share of their rows
        predicted right.

    See Also
    --------
    sklearn.metrics.balanced_accuracy_score : the same on scikit-learn's side.

    Examples
    --------
    >>> from hdist.metrics import balanced_accuracy
    >>> balanced_accuracy(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    0.75
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.shape != y_true.shape:
        raise ValueError("y_true and y_pred must be 1-D of the same length, got shapes %s "
                         "and %s" % (y_true.shape, y_pred.shape))
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    classes, codes = np.unique(y_true, return_inverse=True)
    hits = np.bincount(codes, weights=(y_true == y_pred).astype(np.float64),
                       minlength=len(classes))
    return float(np.mean(hits / np.bincount(codes, minlength=len(classes))))
