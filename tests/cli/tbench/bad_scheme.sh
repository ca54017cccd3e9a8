tbench quant --methods int4,int99
