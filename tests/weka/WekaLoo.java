// Leave-one-out predictions of Weka's IBk, one line per instance: "index,predicted label".
// Usage: java -cp weka.jar:. WekaLoo data.arff k
// Each instance is classified by an IBk built on all the other instances (Weka's own
// EuclideanDistance, ranges updated with the test instance as IBk does).
import weka.classifiers.lazy.IBk;
import weka.core.Instance;
import weka.core.Instances;
import weka.core.converters.ConverterUtils.DataSource;

public class WekaLoo {
    public static void main(String[] args) throws Exception {
        Instances data = DataSource.read(args[0]);
        data.setClassIndex(data.numAttributes() - 1);
        int k = Integer.parseInt(args[1]);
        for (int i = 0; i < data.numInstances(); i++) {
            Instances train = new Instances(data);
            train.delete(i);
            IBk ibk = new IBk(k);
            ibk.buildClassifier(train);
            Instance test = data.instance(i);
            double pred = ibk.classifyInstance(test);
            System.out.println(i + "," + data.classAttribute().value((int) pred));
        }
    }
}
