"""The numbers the ICMLM supplement reports (Sariyildiz et al., ECCV 2020, supplementary material), in one place. Every table and
claim of the chapter shows them beside ours; none is ever used as a result. The main paper's text could not be
obtained (only its abstract and Fig. 1). mAP and top-1 in percent, as printed; ResNet-50 trained on COCO
unless said otherwise.
"""

from __future__ import annotations

# Supp Tab. 1 (left): label set -> (VOC, IN-1K, COCO: linear SVM mAP, logistic-regression top-1, linear SVM mAP,
# Supp F.2); the number of concepts in the name
TABLE1: dict[str, tuple[float, float, float]] = {
    "TP_Label (80)": (80.2, 34.0, 73.5),
    "NN (5K)": (81.8, 43.9, 75.3),
    "NN + ADJ (5K)": (82.3, 44.5, 75.5),
    "NN + ADJ + VB (5K)": (82.6, 43.9, 75.5),
}
# Supp Tab. 1 (right): size of the NN + ADJ + VB label set -> VOC mAP
TABLE1_SIZES: dict[str, float] = {"1K": 81.4, "2.5K": 82.1, "5K": 82.6, "10K": 81.9}

# Supp Tab. 2 (lambda = 0): (head, #L, #H) -> (proxy MTP top-1, VOC, IN-1K, COCO)
TABLE2_COLUMNS = ("Proxy", "VOC", "IN-1K", "COCO")
TABLE2: dict[tuple[str, int, int], tuple[float, float, float, float]] = {
    ("tfm", 1, 1): (65.2, 85.7, 50.6, 77.6),
    ("tfm", 1, 4): (66.1, 85.3, 50.7, 77.5),
    ("tfm", 1, 12): (66.5, 85.5, 50.4, 77.2),
    ("tfm", 2, 1): (66.7, 85.0, 46.6, 76.2),
    ("tfm", 2, 4): (67.1, 85.0, 46.7, 76.3),
    ("tfm", 2, 12): (67.5, 84.8, 46.6, 76.1),
    ("att-fc", 1, 1): (58.5, 86.8, 47.2, 78.9),
    ("att-fc", 1, 4): (59.4, 86.7, 46.8, 78.9),
    ("att-fc", 1, 12): (59.5, 86.6, 47.3, 78.9),
    ("att-fc", 2, 1): (59.5, 86.4, 48.1, 78.8),
    ("att-fc", 2, 4): (60.2, 86.3, 48.5, 78.6),
    ("att-fc", 2, 12): (60.4, 86.3, 48.7, 78.5),
}
BERT_ALONE = 25.7  # Supp Tab. 2 caption: BERT_base alone on the proxy task (top-1)
# Supp B: ICMLM (#L = #H = 1) over TP_Postag and over TP_Label, "at least", (VOC, IN-1K, COCO)
ICMLM_OVER_POSTAG = (3.1, 3.3, 2.1)
ICMLM_OVER_LABEL = (5.5, 13.2, 4.1)
LAMBDA_RN50 = 0.1  # Supp B: the lambda minimising the validation l_tp with ResNet-50 (1.0 with VGG16)

# Supp Tab. 3 (VGG16, zero-shot top-1 over all classes, mean of 5 seeds): row -> (CUB C-11, C-12, C-13,
# AWA2 C-11, C-12, C-13). Training set in the name.
TABLE3_LAYERS = ("C-11", "C-12", "C-13")
TABLE3: dict[str, tuple[float, float, float, float, float, float]] = {
    "TP_Label (COCO)": (11.1, 11.7, 11.5, 31.1, 32.0, 32.8),
    "TP_Cluster 1K (VG)": (9.8, 10.3, 10.3, 30.3, 30.8, 30.6),
    "TP_Cluster 10K (VG)": (10.3, 10.7, 10.4, 30.9, 31.6, 31.9),
    "TP_Postag 1K (VG)": (10.6, 11.1, 11.5, 30.8, 31.7, 32.3),
    "TP_Postag 10K (VG)": (10.4, 10.9, 11.3, 31.0, 31.9, 32.4),
    "ICMLM_tfm (VG)": (12.5, 13.0, 13.7, 32.2, 32.8, 33.1),
    "ICMLM_att-fc (VG)": (12.1, 12.0, 10.9, 31.5, 32.1, 31.5),
    "ICMLM_tfm (COCO)": (12.4, 12.8, 13.3, 32.2, 32.9, 33.8),
    "ICMLM_att-fc (COCO)": (11.9, 12.3, 12.4, 31.8, 32.7, 33.1),
}
