"""
Prototype rules on a real data set
==================================

:class:`~hdist.prototypes.PrototypeClassifier` represents each class by a few prototypes
and gives a row the class of its nearest one: a classifier that reads as a handful of
if-then rules. On the credit-approval data (``credit-a``: 6 continuous and 9 nominal
attributes, missing values) under HVDM, it is compared with exact 1-NN by cross-validated
balanced accuracy, and its prototypes are printed and drawn.
"""
import matplotlib.pyplot as plt
from sklearn.model_selection import StratifiedKFold, cross_val_score

import hdist
import hdist.plot
from hdist.datasets import load_credit_a

X, y = load_credit_a()
folds = StratifiedKFold(5, shuffle=True, random_state=0)
proto = hdist.PrototypeClassifier("hvdm", random_state=0)
knn = hdist.KNeighborsClassifier(1, metric="hvdm")
for name, clf in [("prototype rules", proto), ("1-NN", knn)]:
    s = cross_val_score(clf, X, y, cv=folds, scoring="balanced_accuracy")
    print("%-16s balanced accuracy %.3f +- %.3f" % (name, s.mean(), s.std()))

# %%
# Fitted on all rows: the prototypes as rules, in the data's own units.
proto.fit(X, y)
print(proto.rules_text())

# %%
# Why one applicant gets its class: its values beside the winning prototype's, with
# each attribute's term.
print(proto.explain(X.iloc[0]))

# %%
# The prototypes over two attributes (the income and the prior default flag), on top of
# the rows they classify.
fig, ax = plt.subplots(figsize=(6, 4.5))
hdist.plot.prototypes(proto, X, y, attributes=("A15", "A9"), ax=ax)
ax.set_xscale("symlog", linthresh=1)             # incomes from 0 to 100 000
ax.set_xlim(-0.5, 2 * X["A15"].max())
fig.tight_layout()
