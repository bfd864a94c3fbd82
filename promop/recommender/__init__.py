"""`promop recommender`: the VPA recommender controller (thin) around the pure model in promop.vpa."""
